// Entry point for `azd up` / `azd provision`: a resource group and everything the app needs in it
// (resources.bicep). Subscription scope, as azd's templates use, so one environment is one group.
targetScope = 'subscription'

@minLength(1)
@maxLength(64)
@description('azd environment name: names the resource group and seeds every resource name.')
param environmentName string

@minLength(1)
@description('Region of every resource; it must offer Flex Consumption (az functionapp list-flexconsumption-locations).')
param location string

@description('Resource group name; empty: rg-<environmentName>.')
param resourceGroupName string = ''

@allowed([512, 2048, 4096])
@description('Memory of each Flex Consumption instance, in MB.')
param instanceMemoryMB int = 2048

@minValue(1)
@maxValue(1000)
@description('Most instances the app scales out to.')
param maximumInstanceCount int = 100

@description('Create an Azure OpenAI account and chat deployment, and point the app at it.')
param deployOpenAI bool = false

@description('Chat model to deploy when deployOpenAI is true.')
param openAIModelName string = 'gpt-4o-mini'

@description('Version of that model.')
param openAIModelVersion string = '2024-07-18'

@description('Tokens-per-minute capacity (thousands) of the chat deployment.')
param openAICapacity int = 10

@description('Create Azure Managed Redis for the stream store; needed once more than one instance serves the app.')
param deployRedis bool = false

@description('Run Durable Functions on the Durable Task Scheduler instead of Azure Storage queues and tables.')
param useDurableTaskScheduler bool = false

@secure()
@description('Your own app settings, as a JSON object of names to values (azd: `azd env set APP_SETTINGS \'{"OPENAI_API_KEY": "..."}\'`). The template writes the app\'s whole settings list on every provision, so a setting made in the portal is gone after the next one: keep yours here.')
param appSettings string

var tags = { 'azd-env-name': environmentName }

resource rg 'Microsoft.Resources/resourceGroups@2024-03-01' = {
  name: !empty(resourceGroupName) ? resourceGroupName : 'rg-${environmentName}'
  location: location
  tags: tags
}

module resources 'resources.bicep' = {
  name: 'resources'
  scope: rg
  params: {
    location: location
    tags: tags
    resourceToken: toLower(uniqueString(subscription().id, environmentName, location))
    instanceMemoryMB: instanceMemoryMB
    maximumInstanceCount: maximumInstanceCount
    deployOpenAI: deployOpenAI
    openAIModelName: openAIModelName
    openAIModelVersion: openAIModelVersion
    openAICapacity: openAICapacity
    deployRedis: deployRedis
    useDurableTaskScheduler: useDurableTaskScheduler
    appSettings: appSettings
  }
}

// azd reads these into the environment (.azure/<env>/.env).
output AZURE_LOCATION string = location
output AZURE_TENANT_ID string = tenant().tenantId
output AZURE_RESOURCE_GROUP string = rg.name
output AZURE_FUNCTION_APP_NAME string = resources.outputs.functionAppName
output AZURE_FUNCTION_APP_URL string = resources.outputs.functionAppUrl
